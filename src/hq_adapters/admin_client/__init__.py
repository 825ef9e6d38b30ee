"""httpx client for the SavewebHQ admin API (used by ``hqctl``)."""

from hq_adapters.admin_client.client import (
    AdminClient,
    ApiError,
    ClientError,
    job_body,
    validate_base_url,
)

__all__ = ["AdminClient", "ApiError", "ClientError", "job_body", "validate_base_url"]

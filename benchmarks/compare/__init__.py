"""Side-by-side benchmarks of this tracker and a reference build (``HQ_REF_BIN_DIR``)."""

from hq_apps.cli.hqctl import main

main()

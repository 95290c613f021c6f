from pipeline.cli.commands import main

main()

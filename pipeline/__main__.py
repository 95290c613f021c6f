from pipeline.cli.lake import main

main()

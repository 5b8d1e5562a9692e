from kbench.cli.main import main

main()

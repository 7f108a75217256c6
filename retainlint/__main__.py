from retainlint.cli import main

main()

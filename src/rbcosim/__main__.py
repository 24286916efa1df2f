import sys

from rbcosim.cli.main import main

sys.exit(main())

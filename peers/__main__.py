import sys

from peers.cli import main

sys.exit(main())

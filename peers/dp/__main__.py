import sys

from peers.dp.cli import main

sys.exit(main())

import sys

from sessionstore.cli import main

sys.exit(main())

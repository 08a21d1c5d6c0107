import sys

from store._cli import main

sys.exit(main())

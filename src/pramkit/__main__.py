import sys

from pramkit.cli import main

sys.exit(main())

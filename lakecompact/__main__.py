import sys

from lakecompact.cli import main

sys.exit(main())

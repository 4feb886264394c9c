"""``python3 -m stack up|down|status [COMPONENT...]``: the same as scripts/stack/stack.py."""
import sys

from .cli import main

sys.exit(main())

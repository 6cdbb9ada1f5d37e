"""`python -m infersweep ...`: the command line without the console script (e.g. a GPU host's bundle venv)."""

from infersweep.cli import main

raise SystemExit(main())

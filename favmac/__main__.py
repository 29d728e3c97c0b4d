"""``python -m favmac`` — see :mod:`favmac.cli`."""
from .cli import main

raise SystemExit(main())

import sys

from .runtime.lifetime import defer_stop_signals

defer_stop_signals()  # from here on a stop signal (Ctrl-C…) is one line from main(), not a traceback from an import

from .cli import main  # noqa: E402 - after the handlers

sys.exit(main())

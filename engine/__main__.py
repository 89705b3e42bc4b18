import os
import sys

from .runtime.lifetime import defer_stop_signals, this_process_is_the_command

defer_stop_signals()  # from here on a stop signal (Ctrl-C…) is one line from main(), not a traceback from an import
this_process_is_the_command()  # a time limit counts the imports

from .cli import main  # noqa: E402 - after the handlers

code = main()
exact = sys.modules.get("engine.search.exact")
if exact is not None and exact.solver_still_running(grace_s=1.0):  # see solver_still_running
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
sys.exit(code)

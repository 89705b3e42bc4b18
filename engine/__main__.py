import os
import sys

from .runtime.lifetime import defer_stop_signals, this_process_is_the_command

defer_stop_signals()  # from here on a stop signal (Ctrl-C…) is one line from main(), not a traceback from an import
this_process_is_the_command()  # a time limit counts the imports

from .cli import main  # noqa: E402 - after the handlers

code = main()
stoppable = sys.modules.get("engine.search.stoppable")
if stoppable is not None and stoppable.ran_a_solver():  # see engine.search.stoppable's note
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
sys.exit(code)

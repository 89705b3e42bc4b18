import sys

from .runtime.lifetime import defer_stop_signals, this_process_is_the_command

defer_stop_signals()  # from here on a stop signal (Ctrl-C…) is one line from main(), not a traceback from an import
this_process_is_the_command()  # a time limit counts the imports

from .cli import main  # noqa: E402 - after the handlers

# a plain exit: nothing the commands start outlives them (CP-SAT runs in a child process that is reaped before
# its search returns: engine.search.stoppable), so the interpreter's own finalisation has nothing to trip on
sys.exit(main())

"""Names that a framework, a protocol or the interpreter uses by name, where vulture cannot see the use.

``vulture engine app vulture_whitelist.py`` reads this file with the code: each ``_.name`` below counts as a use of
``name`` anywhere. Each entry says who uses the name and why. Nothing here imports the project (an import would
hide an unused import elsewhere from vulture); run, the file does nothing.
"""


class _AnyObject:
    """Stands for the object that has the name: every attribute is None."""

    def __getattr__(self, name: str) -> None:
        return None


_ = _AnyObject()

# -- engine/ ---------------------------------------------------------------------------------------------------------
ENGINE = [
    # engine/__init__.py, engine/runtime/__init__.py: PEP 562 module hooks; Python calls them for a lazily loaded name
    _.__getattr__,
    _.__dir__,  # engine/__init__.py: dir(engine) and tab completion list the lazy names too
    # engine/search/exact.py: CP-SAT calls a CpSolverSolutionCallback's on_solution_callback at each solution
    _.on_solution_callback,
    # engine/search/exact.py: CP-SAT's SatParameters fields, read by the solver (protobuf attributes)
    _.max_time_in_seconds,
    _.random_seed,
    _.catch_sigint_signal,
    # engine/traces/names.py: re2.Options fields, read by RE2 when it compiles a pattern
    _.log_errors,
    _.max_mem,
    # engine/traces/reading.py: io.RawIOBase's protocol; io.BufferedReader calls readable() and readinto()
    _.readable,
    _.readinto,
    # engine/scale/request.py: a PlanRequest field, read by name (getattr) when the custom model is built
    _.kv_heads,
]

"""Checks of a Timeline against its schedule, shared by the property and runtime tests."""


def check_timeline(schedule, comm: float, timeline) -> None:
    """Every action once, dependencies kept (with ``comm`` across ranks), no overlap on a rank."""
    frame = timeline.frame
    m = schedule.num_microbatches
    # every action exactly once
    keys = list(zip(frame["stage"], frame["kind"], frame["microbatch"], strict=True))
    assert len(keys) == len(set(keys)) == schedule.num_actions
    by_key = {key: row for key, row in zip(keys, frame.itertuples(index=False), strict=True)}
    for mb in range(m):  # each micro-batch through its route: every stage, or DualPipe's one copy
        for stage in schedule.route(mb):
            assert (stage, "F", mb) in by_key
            assert ((stage, "B", mb) in by_key) != ((stage, "I", mb) in by_key and (stage, "W", mb) in by_key)

    # dependencies: consumer starts no earlier than producer end (+ comm across ranks)
    def after(consumer, producer_key):
        producer = by_key[producer_key]
        hop = comm if producer.rank != consumer.rank else 0.0
        assert consumer.start >= producer.end + hop - 1e-9 * max(1.0, producer.end), (consumer, producer)

    def grad(stage, mb):
        return (stage, "B", mb) if (stage, "B", mb) in by_key else (stage, "I", mb)

    for (stage, kind, mb), row in by_key.items():
        route = schedule.route(mb)
        if kind == "F" and stage > route.start:
            after(row, (stage - 1, "F", mb))
        if kind in ("B", "I"):
            after(row, (stage, "F", mb))
            if stage < route.stop - 1:
                after(row, grad(stage + 1, mb))
        if kind == "W":
            after(row, (stage, "I", mb))
    # no two slots overlap on a rank, and each rank keeps its list order
    slots = frame.drop_duplicates(["rank", "step"]).sort_values(["rank", "step"])
    for _, rank_slots in slots.groupby("rank"):
        starts, ends = rank_slots["start"].to_numpy(), rank_slots["end"].to_numpy()
        assert (starts[1:] >= ends[:-1] - 1e-9).all()
    assert 0 <= timeline.bubble_fraction < 1
    assert all(busy > 0 for busy in timeline.busy_per_rank())

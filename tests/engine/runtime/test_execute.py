"""The one execution loop with each of its transports: the in-process one (emulated) and the process-group one
(distributed), here between threads of this process through a stand-in for ``torch.distributed``'s recv and
isend, so the check needs no processes. Both must run every rank's list in its order and leave the same
gradients as the unsplit model."""

import queue
import threading
from collections import defaultdict

import pytest
import torch

from engine.model_config import ModelConfig
from engine.runtime import GRADIENT_TOLERANCE, RunConfig
from engine.runtime.distributed.status import RankStatus
from engine.runtime.distributed.transport import ProcessGroup
from engine.runtime.execute import InProcess, Watch, execute
from engine.runtime.gradients import gradient_errors, reference_gradients
from engine.runtime.stage import build_worker
from engine.runtime.timing import ActionClock, StepClock

CPU = torch.device("cpu")


class Order(Watch):
    """The actions each rank ran, in the order it ran them."""

    def __init__(self, c):
        self.c = c
        self.ran = {rank: [] for rank in range(c.num_ranks)}

    def finished(self, i):
        self.ran[int(self.c.rank[i])].append(i)


class ThreadedPeers:
    """``torch.distributed``'s recv and isend between threads: one queue per (source, destination, tag)."""

    def __init__(self):
        self.queues = defaultdict(queue.Queue)
        self.lock = threading.Lock()

    def channel(self, source, destination, tag):
        with self.lock:
            return self.queues[(source, destination, tag)]

    def of(self, rank):
        hub = self

        class Peers:
            def recv(self, tensor, *, src, tag):
                tensor.copy_(hub.channel(src, rank, tag).get(timeout=30))

            def isend(self, tensor, *, dst, tag):
                hub.channel(rank, dst, tag).put(tensor.clone())
                return Sent()

        return Peers()


class Sent:
    def wait(self):
        pass


def in_process(config, watch):
    c = config.plan.compiled
    workers = {rank: build_worker(config, rank, CPU) for rank in range(config.num_ranks)}
    clocks = {rank: ActionClock(CPU) for rank in range(config.num_ranks)}
    actions = [i for slot in config.plan.order for i in c.slot_actions(slot)]
    execute(c, actions, workers, clocks, InProcess(c, [CPU] * config.num_ranks, clocks), watch)
    return workers, {}


def process_group(config, watch):
    c = config.plan.compiled
    peers = ThreadedPeers()
    workers = {rank: build_worker(config, rank, CPU) for rank in range(config.num_ranks)}
    boundary = torch.empty(config.model.boundary_shape(config.num_microbatches))
    waits, errors = {}, []

    def one_rank(rank):
        try:
            clock = StepClock(CPU)
            transport = ProcessGroup(c, boundary, clock, RankStatus(None, rank), peers.of(rank))
            execute(c, c.rank_actions(rank), {rank: workers[rank]}, {rank: clock}, transport, watch)
            transport.finish()
            waits[rank] = transport.waits
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)

    threads = [threading.Thread(target=one_rank, args=(rank,)) for rank in range(config.num_ranks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    return workers, waits


@pytest.mark.parametrize(
    "name, chunks, recompute",
    [("1f1b", None, False), ("zb-h1", None, True), ("zb-v", 2, False), ("dualpipev", 2, False)],
)
def test_both_transports_run_each_list_in_order_and_match_the_unsplit_model(name, chunks, recompute):
    config = RunConfig(
        family=name,
        num_ranks=2,
        num_microbatches=4,
        num_chunks=chunks,
        model=ModelConfig(kind="mlp", layers=4, hidden=16, batch=8),
        recompute=recompute,
        repeats=1,
        warmup_steps=0,
    )
    c = config.plan.compiled
    _, reference = reference_gradients(config.model)
    gradients = []
    for backend in (in_process, process_group):
        watch = Order(c)
        workers, waits = backend(config, watch)
        for rank in range(config.num_ranks):  # every rank ran exactly its own list, in its order
            assert watch.ran[rank] == list(c.rank_actions(rank)), backend.__name__
            if backend is process_group:  # one recorded wait per receive from another rank
                remote = [c.label(i) for i in c.rank_actions(rank) if c.neighbour_is_remote[i]]
                assert [action for *_, action in waits[rank]] == remote
                assert all(end >= start for start, end, *_ in waits[rank])
        errors = {}
        for worker in workers.values():
            errors.update(gradient_errors(config.plan, worker, reference))
        assert max(errors.values()) < GRADIENT_TOLERANCE, backend.__name__
        gradients.append(
            {
                (rank, parameter_name): parameter.grad
                for rank, worker in workers.items()
                for stage in worker.stages.values()
                for parameter_name, parameter in stage.named_parameters(prefix=str(stage.index))
            }
        )
    in_process_grads, process_group_grads = gradients
    assert in_process_grads.keys() == process_group_grads.keys()
    for key, grad in in_process_grads.items():
        torch.testing.assert_close(grad, process_group_grads[key], rtol=1e-6, atol=1e-8)

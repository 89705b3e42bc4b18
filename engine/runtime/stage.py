"""Performing actions on real tensors: one dispatch, ``RankWorker.perform(action, incoming)``.

* F   runs the stage forward; the last stage computes the micro-batch loss, scaled by 1/m so that the
      accumulated gradients equal one full-batch step (the loss is a mean over samples).
* B   full backward: gradients for the stage input and the weights in one autograd pass.
* I   gradient for the stage input only (what the previous stage waits for). Autograd is asked for the
      gradients of the stage input and of every parameterised layer's *output*, never of a weight, so no
      weight gradient is computed; the graph is then freed, keeping only each layer's input and output
      gradient — for these small models nearly as many bytes as the activations (the MLP keeps ~85 %, the
      GPT ~90 %: the attention scores go), which the run measures. See [Note: split backward].
* W   weight gradients from those kept (layer input, output gradient) pairs, by the layers' own formulas:
      Linear dW = gᵀx, db = Σg; LayerNorm dγ = Σ g·x̂, dβ = Σg; Embedding dE = scatter-add of g.
      This is the Zero Bubble paper's split (§2): W needs only what I leaves behind.
* recompute: the forward runs without a graph and keeps only its input; I or B first re-runs it.

[Note: split backward] PyTorch's own pipelining does the same split on autograd graph edges
(``stage_backward_input`` / ``stage_backward_weight``); doing it per layer type keeps W independent of the
graph, so I can free the activations and the measured memory drops the way the Zero Bubble paper counts.

Memory: bytes of activations a micro-batch holds on this rank — tensors autograd saved for backward
(counted with ``torch.autograd.graph.saved_tensors_hooks``, each storage once, weights excluded) plus the
tensors kept for later passes. On CUDA, ``torch.cuda.memory_allocated`` is reported as well.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..ir import Action, Kind
from ..models import Stage, ToyModel, make_batch, split_model
from .config import RunConfig

WEIGHTED_LAYERS = (nn.Linear, nn.LayerNorm, nn.Embedding)


@dataclass
class MicrobatchState:
    """What one (stage, micro-batch) keeps between its passes."""

    input: torch.Tensor | None = None  # stage input (requires grad unless stage 0)
    output: torch.Tensor | None = None  # stage output, or the scaled loss on the last stage
    saved: list = field(default_factory=list)  # tensors autograd saved for backward
    layer_outputs: list = field(default_factory=list)  # (layer, layer input, layer output) for I
    weight_inputs: list = field(default_factory=list)  # (layer, layer input, output gradient) for W

    def tensors(self):
        yield from (self.input, self.output)
        yield from self.saved
        for _, x, y in self.layer_outputs:
            yield from (x, y)
        for _, x, g in self.weight_inputs:
            yield from (x, g)


class RankWorker:
    """The stages one rank holds, and the real work of every action on them."""

    def __init__(
        self,
        rank: int,
        stages: dict[int, Stage],
        inputs: list[torch.Tensor],
        targets: list[torch.Tensor],
        *,
        split: set[tuple[int, int]],
        recompute: bool,
        device: torch.device,
        fail_at: str | None = None,
    ):
        self.rank = rank
        self.stages = stages
        self.inputs, self.targets = inputs, targets  # per micro-batch; used by the first and last stage
        self.num_microbatches = len(inputs)
        self.split = split  # (stage, micro-batch) pairs whose backward is I + W
        self.recompute = recompute
        self.device = device
        self.fail_at = fail_at  # inject a failure at this action (tests)
        self.peak_during = 0  # the most held during the last action, when it rebuilt activations (recompute)
        self.states: dict[tuple[int, int], MicrobatchState] = {}
        self.losses: dict[int, float] = {}
        self._parameter_storages = {p.untyped_storage().data_ptr() for s in stages.values() for p in s.parameters()}
        self._recording: list | None = None
        for stage in stages.values():
            for module in stage.modules():
                if isinstance(module, WEIGHTED_LAYERS):
                    module.register_forward_hook(self._record_layer)

    # -- the dispatch -------------------------------------------------------------------------------------------
    def perform(self, action: Action, incoming: torch.Tensor | None) -> torch.Tensor | None:
        """Run one action. ``incoming``: the activation (F) or output gradient (B, I) from the neighbour stage.

        Returns what the neighbour needs: the activation for F, the input gradient for B and I, else None.
        """
        self.peak_during = 0
        if self.fail_at is not None and str(action) == self.fail_at:
            raise RuntimeError(f"injected failure at {action}")
        if action.kind is Kind.F:
            return self._forward(action.stage, action.microbatch, incoming)
        if action.kind is Kind.W:
            return self._backward_weight(action.stage, action.microbatch)
        return self._backward(action.stage, action.microbatch, incoming, split=action.kind is Kind.I)

    # -- F -----------------------------------------------------------------------------------------------------
    def _forward(self, stage_index: int, mb: int, incoming):
        stage = self.stages[stage_index]
        state = MicrobatchState()
        self.states[(stage_index, mb)] = state
        if stage.is_first_stage:
            x = self.inputs[mb]
        else:
            x = incoming.detach().requires_grad_(True)
        state.input = x
        if self.recompute:
            with torch.no_grad():
                output = self._run(stage, x, mb)
            return None if stage.is_last_stage else output
        output = self._run_recording(stage, x, mb, state, keep_layers=(stage_index, mb) in self.split)
        state.output = output
        return None if stage.is_last_stage else output.detach()

    def _run(self, stage: Stage, x, mb: int):
        if stage.is_last_stage:
            loss = stage(x, self.targets[mb]) / self.num_microbatches
            self.losses[mb] = float(loss.detach())
            return loss
        return stage(x)

    def _run_recording(self, stage: Stage, x, mb: int, state: MicrobatchState, *, keep_layers: bool):
        def pack(tensor):
            state.saved.append(tensor)
            return tensor

        self._recording = state.layer_outputs if keep_layers else None
        try:
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
                return self._run(stage, x, mb)
        finally:
            self._recording = None

    def _record_layer(self, module, args, output):
        if self._recording is not None and torch.is_grad_enabled():
            self._recording.append((module, args[0], output))

    # -- B and I -------------------------------------------------------------------------------------------------
    def _backward(self, stage_index: int, mb: int, grad_output, *, split: bool):
        stage = self.stages[stage_index]
        state = self.states[(stage_index, mb)]
        if self.recompute:  # re-run the forward, this time with a graph; the rebuilt activations are the peak
            state.output = self._run_recording(stage, state.input, mb, state, keep_layers=split)
            self.peak_during = self.memory_bytes()
        wants_input_grad = not stage.is_first_stage
        grad = None if stage.is_last_stage else grad_output
        # the forward (or the re-run above) left both; only I clears them, and this is the pair's one backward
        assert state.input is not None and state.output is not None, (
            f"stage {stage_index}, micro-batch {mb}: no forward"
        )
        if not split:
            torch.autograd.backward(state.output, grad)
            input_grad = state.input.grad if wants_input_grad else None
            del self.states[(stage_index, mb)]
            return input_grad
        # I: gradients of the stage input and of each weighted layer's output — never of a weight
        layers = [(m, x, y) for m, x, y in state.layer_outputs if y.requires_grad]
        targets = ([state.input] if wants_input_grad else []) + [y for _, _, y in layers]
        grads = torch.autograd.grad(state.output, targets, grad, allow_unused=True)
        input_grad = grads[0] if wants_input_grad else None
        layer_grads = grads[1:] if wants_input_grad else grads
        state.weight_inputs = [
            (m, x.detach(), g) for (m, x, _), g in zip(layers, layer_grads, strict=True) if g is not None
        ]
        # the graph is gone: drop everything but what W needs
        state.input = state.output = None
        state.saved, state.layer_outputs = [], []
        return input_grad

    # -- W -------------------------------------------------------------------------------------------------------
    def _backward_weight(self, stage_index: int, mb: int):
        state = self.states.pop((stage_index, mb))
        with torch.no_grad():
            for module, x, g in state.weight_inputs:
                accumulate_weight_gradient(module, x, g)
        return None

    # -- memory ----------------------------------------------------------------------------------------------------
    def activation_bytes(self) -> int:
        """Bytes of activations held for later passes on this rank, each storage counted once, weights excluded."""
        seen, total = set(), 0
        for state in self.states.values():
            for tensor in state.tensors():
                if tensor is None or not isinstance(tensor, torch.Tensor):
                    continue
                storage = tensor.untyped_storage()
                pointer = storage.data_ptr()
                if pointer in seen or pointer in self._parameter_storages or pointer == 0:
                    continue
                seen.add(pointer)
                total += storage.nbytes()
        return total

    def weight_bytes(self) -> int:
        """Bytes of the parameters this rank holds (DualPipe's rank holds two copies' blocks: about twice)."""
        return sum(p.numel() * p.element_size() for stage in self.stages.values() for p in stage.parameters())

    def memory_bytes(self) -> int:
        """What the run reports after each action: activation bytes on CPU, allocated bytes on a GPU."""
        if self.device.type == "cuda":
            return int(torch.cuda.memory_allocated(self.device))
        return self.activation_bytes()

    def zero_grad(self) -> None:
        for stage in self.stages.values():
            stage.zero_grad(set_to_none=True)
        self.losses.clear()


def build_worker(config: RunConfig, rank: int, device: torch.device) -> RankWorker:
    """The stages rank ``rank`` holds, copied from the seeded full model, and its share of the data."""
    schedule = config.plan.schedule
    model = ToyModel(config.model)
    stages = split_model(model, list(config.plan.stage_layers), schedule.copies)
    mine = {s.index: s.to(device) for s in stages if schedule.rank_of(s.index) == rank}
    x, target = make_batch(config.model)
    m = config.num_microbatches
    # clones: a view would share the whole batch's storage, and memory is counted per storage
    inputs = [chunk.to(device).clone() for chunk in x.chunk(m)]
    targets = [chunk.to(device).clone() for chunk in target.chunk(m)]
    c = config.plan.compiled
    split = set(zip(c.stage[c.kind == Kind.I].tolist(), c.microbatch[c.kind == Kind.I].tolist(), strict=True))
    return RankWorker(
        rank,
        mine,
        inputs,
        targets,
        split=split,
        recompute=config.recompute,
        device=device,
        fail_at=config.failure_for(rank),
    )


def accumulate_weight_gradient(module: nn.Module, x: torch.Tensor, g: torch.Tensor) -> None:
    """Add this layer's weight gradients, given its input x and its output gradient g."""
    if isinstance(module, nn.Linear):
        g2 = g.reshape(-1, g.shape[-1])  # (rows, out)
        x2 = x.reshape(-1, x.shape[-1])  # (rows, in)
        _accumulate(module.weight, g2.t() @ x2)  # (out, in)
        if module.bias is not None:
            _accumulate(module.bias, g2.sum(0))
    elif isinstance(module, nn.LayerNorm):
        normalised = F.layer_norm(x, module.normalized_shape, eps=module.eps)  # x̂, recomputed from x
        dims = tuple(range(x.dim() - len(module.normalized_shape)))
        if module.weight is not None:
            _accumulate(module.weight, (g * normalised).sum(dims))
        if module.bias is not None:
            _accumulate(module.bias, g.sum(dims))
    elif isinstance(module, nn.Embedding):
        gradient = torch.zeros_like(module.weight)
        gradient.index_add_(0, x.reshape(-1), g.reshape(-1, g.shape[-1]).to(gradient.dtype))
        _accumulate(module.weight, gradient)
    else:  # pragma: no cover - WEIGHTED_LAYERS lists what is handled
        raise TypeError(f"no weight-gradient formula for {type(module).__name__}")


def _accumulate(parameter: torch.Tensor, gradient: torch.Tensor) -> None:
    if not parameter.requires_grad:
        return
    if parameter.grad is None:
        parameter.grad = gradient.detach().clone()
    else:
        parameter.grad.add_(gradient)

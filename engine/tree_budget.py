"""One budget for a run tree (seed 004): the root's task may declare `budget_usd` and
`budget_tokens`; before every model call anywhere in the tree (a step's, a retry's, a
ladder rung's), what the whole tree has spent — read from the recorded events of each of
its runs, so a crash or a resume changes nothing — is checked against it, and a call over
it is not made: the step fails NEEDS_ESCALATION (11), which travels up the tree.

The check reaches the model-call code through a context variable set for the run's
execution (`guarding`), so the callers of a model (steps, rungs, micro-steps) need not
carry the run along.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from controlroom.domain.errors import TreeBudgetExceededError
from controlroom.domain.run import Run
from controlroom.domain.spend import NOTHING, Spend
from controlroom.eventstore.store import EventStore

_GUARD: ContextVar[Callable[[], None] | None] = ContextVar("tree_budget_guard", default=None)


def check_before_model_call() -> None:
    """Raise `TreeBudgetExceededError` when the running tree's budget is spent."""
    guard = _GUARD.get()
    if guard is not None:
        guard()


def declared_budget(root: Run) -> tuple[float | None, int | None]:
    """The root's `budget_usd` and `budget_tokens` task args (None where not declared)."""
    args = root.task.args

    def number(name: str) -> float | None:
        value = args.get(name)
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return None
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return float(value)
        return None

    tokens = number("budget_tokens")
    return number("budget_usd"), None if tokens is None else int(tokens)


def tree_spend(store: EventStore, root: Run, current: Run) -> Spend:
    """What every run of the tree has spent; `current` as this process holds it."""
    return TreeBudget(store, root, current).spent()


class TreeBudget:
    def __init__(self, store: EventStore, root: Run, current: Run) -> None:
        self.store, self.root, self.current = store, root, current
        self.usd, self.tokens = declared_budget(root)
        #: Finished runs of the tree (their spend and children never change again), so a
        #: check loads only the runs still going, not the whole tree, before each call.
        self._settled: dict[str, tuple[Spend, list[str]]] = {}

    @property
    def declared(self) -> bool:
        return self.usd is not None or self.tokens is not None

    def spent(self) -> Spend:
        """What the tree has spent: `current` as this process holds it, finished runs as
        remembered, every other run as the store has it now."""
        from controlroom.engine.child_policies import children_of

        total = NOTHING
        queue, seen = [self.root.id], {self.root.id}
        while queue:
            run_id = queue.pop(0)
            settled = self._settled.get(run_id)
            if settled is not None:
                spend, children = settled
            else:
                run = self.current if run_id == self.current.id else self.store.load(Run, run_id)
                if run is None:
                    continue
                spend, children = run.spent, list(children_of(run))
                if run.is_finished and run is not self.current:
                    self._settled[run_id] = (spend, children)
            total = total + spend
            for child in children:
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
        return total

    def __call__(self) -> None:
        spent = self.spent()
        if self.usd is not None and spent.cost_usd >= self.usd:
            raise TreeBudgetExceededError(self.root.id, f"${spent.cost_usd:.4f} of ${self.usd:g}")
        if self.tokens is not None and spent.tokens >= self.tokens:
            raise TreeBudgetExceededError(self.root.id, f"{spent.tokens} of {self.tokens} tokens")


@contextmanager
def guarding(store: EventStore, run: Run) -> Iterator[None]:
    """Check the tree's budget before each model call made while this block runs."""
    root = run
    if run.origin.root_run_id and run.origin.root_run_id != run.id:
        root = store.load(Run, run.origin.root_run_id) or run
    budget = TreeBudget(store, root, run)
    token = _GUARD.set(budget if budget.declared else None)
    try:
        yield
    finally:
        _GUARD.reset(token)

"""The order in which `tapelab grade` sends its queued submissions to the workers (tapelab.grading.schedule):
longest first, so that a run does not end with one long notebook running alone while the other workers idle."""
import heapq
from types import SimpleNamespace

from tapelab.grading import run
from tapelab.grading.schedule import LongestFirst


def _cand(student: str, notebook: str) -> SimpleNamespace:
    return SimpleNamespace(student=student, assignment=notebook, notebook=notebook)


def _names(queue) -> list[tuple[str, str]]:
    return [(c.student, c.notebook) for c in queue]


def test_notebooks_not_yet_timed_come_first_in_the_order_they_arrived():
    queue = LongestFirst([_cand("a", "01"), _cand("a", "02"), _cand("b", "01"), _cand("b", "02")])
    assert (queue.peek().student, queue.peek().notebook) == ("a", "01")
    queue.timed(queue.take(), 2.0)  # 01 is timed; 02 is not: 02 next, though b's 01 arrived before it
    assert _names([queue.peek()]) == [("a", "02")]
    assert _names(queue) == [("b", "01"), ("a", "02"), ("b", "02")]
    assert len(queue) == 3 and queue


def test_before_any_result_each_notebook_not_yet_timed_gets_a_turn():
    """A run's first submissions are one of each notebook (in the order they arrived), not all of the first
    notebook, so every notebook is timed as early as can be."""
    queue = LongestFirst([_cand(s, nb) for s in "ab" for nb in ("01", "02", "03")])
    assert _names([queue.take() for _ in range(4)]) == [("a", "01"), ("a", "02"), ("a", "03"), ("b", "01")]


def test_the_notebook_that_took_longest_on_average_goes_first_and_each_notebook_keeps_its_order():
    students = ["a", "b", "c", "d"]
    queue = LongestFirst([_cand(s, nb) for s in students for nb in ("01", "02", "03")])
    for seconds in (2.0, 9.0, 4.0):  # the first of each, as arrived: 01, 02, 03
        queue.timed(queue.take(), seconds)
    queue.timed(_cand("x", "02"), 1.0)  # 02's mean is now 5.0: still the longest
    order = []
    while queue:
        order.append(queue.take())
    assert _names(order) == [(s, "02") for s in "bcd"] + [(s, "03") for s in "bcd"] + [(s, "01") for s in "bcd"]


def test_a_tie_goes_to_the_notebook_that_arrived_first_and_bad_timings_are_ignored():
    queue = LongestFirst([_cand("a", "01"), _cand("a", "02"), _cand("b", "01"), _cand("b", "02")])
    queue.timed(queue.take(), 3.0)
    queue.timed(queue.take(), 3.0)
    for bad in (None, -1.0, float("nan"), "7", True):
        queue.timed(_cand("z", "02"), bad)
    assert _names([queue.take(), queue.take()]) == [("b", "01"), ("b", "02")]
    assert not queue and len(queue) == 0


def test_clear_empties_the_queue_and_take_of_an_empty_queue_says_so():
    queue = LongestFirst([_cand("a", "01")])
    assert _names(queue.clear()) == [("a", "01")]
    assert not queue
    try:
        queue.take()
    except IndexError as error:
        assert "empty" in str(error)
    else:
        raise AssertionError("take() of an empty queue returned")


def _makespan(order_of, durations: dict[str, float], students: int, workers: int = 2) -> float:
    """When the last of `students` x notebooks ends on `workers` that each take the next queued submission
    when free, in the order `order_of(queue, seconds)` gives."""
    queue = [_cand(f"s{i:02d}", nb) for i in range(students) for nb in durations]
    free = [(0.0, w) for w in range(workers)]
    done: list[tuple[float, SimpleNamespace]] = []
    ends = []
    for _ in range(len(queue)):
        now, worker = heapq.heappop(free)
        cand = order_of(queue, done, now)
        end = now + durations[cand.notebook]
        done.append((end, cand))
        ends.append(end)
        heapq.heappush(free, (end, worker))
    return max(ends)


def test_longest_first_ends_a_class_sooner_than_first_come_first_served():
    """A class graded on 2 workers, each notebook's time as measured at 12 x 6 (bench/grading.py): sent in
    arrival order, the run ends with a long notebook alone; sent longest first, almost at total / 2."""
    durations = {"01": 2.5, "02": 7.1, "03": 6.5, "04": 4.9, "05": 2.6, "06": 9.1}

    def first_come(queue, done, now):
        return queue.pop(0)

    state: dict = {}

    def longest(queue, done, now):
        if "q" not in state:
            state["q"], state["seen"] = LongestFirst(list(queue)), 0
        for end, cand in sorted(done, key=lambda d: d[0])[state["seen"]:]:
            if end <= now:  # a result the coordinator has received
                state["q"].timed(cand, durations[cand.notebook])
        state["seen"] = sum(1 for end, _ in done if end <= now)
        return state["q"].take()

    total = 12 * sum(durations.values())
    fifo, lpt = _makespan(first_come, durations, 12), _makespan(longest, durations, 12)
    assert fifo - total / 2 > 3.0, fifo  # the arrival order ends with a 06 alone
    assert lpt - total / 2 < 1.0, lpt
    assert lpt < fifo


class _Pool:
    """Runs one submission at a time; each takes its notebook's seconds."""

    capacity = 1

    def __init__(self, seconds: dict[str, float]):
        self.seconds, self.running, self.sent = seconds, [], []

    def submit(self, cand) -> None:
        self.sent.append((cand.student, cand.notebook))
        self.running.append(cand)

    def __len__(self) -> int:
        return len(self.running)

    def finished(self):
        cand = self.running.pop(0)
        return [(cand, {"seconds": self.seconds[cand.notebook], "facts": {}})]


class _Coordinator(run.Coordinator):
    """The coordinator's loop alone: submissions go to `_Pool`, results are recorded as they come."""

    def __init__(self, queue, pool):
        self.queue, self.pool, self.in_flight, self.recorded = LongestFirst(queue), pool, {}, []

    def _start(self, cand) -> None:
        self.pool.submit(cand)
        self.in_flight[id(cand)] = (cand, None)

    def _finished(self, cand, task, result) -> dict:
        return {"student": cand.student}

    def _record(self, cand, entry) -> None:
        self.recorded.append((cand.student, cand.notebook))


def test_the_coordinator_sends_the_longest_notebook_first_once_it_has_timed_them(monkeypatch):
    monkeypatch.setattr(run.insight_page, "load_plotting", lambda: None)
    pool = _Pool({"01": 1.0, "02": 5.0})
    coordinator = _Coordinator([_cand(s, nb) for s in "abc" for nb in ("01", "02")], pool)
    coordinator._execute_all()
    assert pool.sent == [("a", "01"), ("a", "02"), ("b", "02"), ("c", "02"), ("b", "01"), ("c", "01")]
    assert sorted(coordinator.recorded) == sorted(pool.sent)

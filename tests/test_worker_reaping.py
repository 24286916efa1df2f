"""The socket loop reaps an ended session worker only once its last messages can have come:
a worker ends cleanly (exit code 0) only after it has sent "closed" and its replies, so a
clean end without "closed" means they are still on their way (read by ZeroMQ's I/O thread
after the process's end is seen). Waiting longer than _LAST_WORDS_S gives up on them."""

from types import SimpleNamespace

from rbcosim.service.workers import _LAST_WORDS_S, SessionWorkers, Worker


def _worker(exitcode, closed=False, adopted=False) -> Worker:
    w = Worker(b"w1", SimpleNamespace(exitcode=exitcode), 0.0, None, None)
    w.closed, w.adopted = closed, adopted
    return w


def test_a_clean_end_without_closed_waits_for_the_last_words_then_gives_up():
    w = _worker(0)
    assert SessionWorkers._last_words_due(w, 100.0)  # first seen ended now
    assert SessionWorkers._last_words_due(w, 100.0 + 0.5 * _LAST_WORDS_S)
    assert not SessionWorkers._last_words_due(w, 100.0 + _LAST_WORDS_S)


def test_an_exit_code_not_yet_known_counts_as_a_clean_end():
    assert SessionWorkers._last_words_due(_worker(None), 5.0)


def test_nothing_is_waited_for_after_closed_a_failure_or_a_lost_fork_server():
    assert not SessionWorkers._last_words_due(_worker(0, closed=True), 5.0)
    assert not SessionWorkers._last_words_due(_worker(1), 5.0)  # an exception in the worker
    assert not SessionWorkers._last_words_due(_worker(-9), 5.0)  # killed (memory, timeout)
    assert not SessionWorkers._last_words_due(_worker(0, adopted=True), 5.0)

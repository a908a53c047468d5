"""The plugin's lines against docs/steps.md, with stand-in stats objects (no vLLM)."""

import io
import json
import os
import tempfile
import time
import unittest
from types import SimpleNamespace as NS
from unittest import mock

import inferlint_vllm_steps as steps


def sched(**kw):
    """SchedulerStats as vLLM 0.32 fills it (vllm/v1/metrics/stats.py), with details."""
    details = NS(iteration_index=7, num_ctx_requests=1, num_ctx_tokens=400,
                 num_generation_requests=3, num_generation_tokens=3, elapsed_ms=12.5)
    base = dict(num_running_reqs=4, num_waiting_reqs=2, num_skipped_waiting_reqs=1,
                kv_cache_usage=0.25, iteration_details=details,
                kv_cache_eviction_events=[])
    base.update(kw)
    return NS(**base)


def finished(**kw):
    base = dict(request_id="cmpl-1", finish_reason="length", num_prompt_tokens=32,
                num_generation_tokens=16, num_cached_tokens=0, num_preemptions=1,
                queued_time=0.5, prefill_time=0.25, decode_time=1.0, inference_time=1.25)
    base.update(kw)
    return NS(**base)


def iteration(fins=()):
    return NS(num_generation_tokens=4, num_prompt_tokens=400, num_preempted_reqs=0,
              finished_requests=list(fins))


class Raises:
    """A stats object whose attribute raises something other than AttributeError."""

    @property
    def num_running_reqs(self):
        raise RuntimeError("stats changed under us")


class Held(steps.InferlintStepLogger):
    """The writer starts only when the test says: the queue can fill."""

    def _start(self):
        pass

    def release(self):
        steps.InferlintStepLogger._start(self)


class Steps(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "steps.jsonl")
        env = mock.patch.dict(os.environ, {"INFERLINT_STEPS": self.path})
        env.start()
        self.addCleanup(env.stop)
        self.addCleanup(self.dir.cleanup)
        config = NS(observability_config=NS(enable_logging_iteration_details=True))
        self.config = config

    def lines(self, logger):
        logger.close()
        with open(self.path, encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def test_lines_as_the_contract_says(self):
        logger = steps.InferlintStepLogger(self.config, engine_index=0)
        logger.record(sched(), iteration([finished()]))
        header, step, fin, end = self.lines(logger)
        self.assertEqual(header["schema"], "inferlint.steps/1")
        self.assertEqual(header["engine"], "vllm")
        self.assertEqual(header["engine_index"], 0)
        self.assertEqual(header["pid"], os.getpid())
        self.assertIs(header["iteration_details"], True)
        self.assertEqual(header["unread"], [])
        self.assertGreaterEqual(step["t"], 0)
        without_t = {k: v for k, v in step.items() if k != "t"}
        self.assertEqual(without_t, {"i": 7, "r": 4, "w": 2, "d": 1, "kv": 0.25, "pr": 1,
                                     "pt": 400, "dr": 3, "dt": 3, "ms": 12.5, "gen": 4,
                                     "prompt": 400, "pre": 0})
        self.assertEqual({k: v for k, v in fin.items() if k != "t"},
                         {"fin": "cmpl-1", "reason": "length", "in": 32, "out": 16,
                          "cached": 0, "pre": 1, "queued": 0.5, "prefill": 0.25,
                          "decode": 1.0, "infer": 1.25})
        self.assertEqual(fin["t"], step["t"])
        self.assertEqual((end["end"], end["steps"], end["dropped"], end["calls"]),
                         (True, 1, 0, 1))

    def test_eviction_events_are_counted(self):
        logger = steps.InferlintStepLogger(self.config)
        logger.record(sched(kv_cache_eviction_events=[object(), object()]), None)
        self.assertEqual(self.lines(logger)[1]["ev"], 2)

    def test_an_absent_attribute_is_left_out_and_listed_as_unread(self):
        logger = steps.InferlintStepLogger(self.config)
        stats = sched()
        del stats.num_skipped_waiting_reqs
        logger.record(stats, None)
        header, step, _end = self.lines(logger)
        self.assertEqual(header["unread"], ["SchedulerStats.num_skipped_waiting_reqs"])
        self.assertNotIn("d", step)
        self.assertEqual(step["w"], 2)

    def test_without_iteration_details_the_step_has_no_batch(self):
        logger = steps.InferlintStepLogger(NS())
        logger.record(sched(iteration_details=None), None)
        header, step, _end = self.lines(logger)
        self.assertIs(header["iteration_details"], False)
        self.assertEqual(set(step), {"t", "r", "w", "d", "kv"})
        self.assertEqual(header["unread"], [])

    def test_a_full_queue_gives_a_gap_then_the_next_step(self):
        with mock.patch.object(steps, "QUEUE_SIZE", 2):
            logger = Held(self.config)
        for i in range(5):  # 2 held, 3 dropped
            logger.record(sched(iteration_details=None, num_running_reqs=i), None)
        logger.release()
        deadline = time.monotonic() + 10
        while not logger._q.empty() and time.monotonic() < deadline:
            time.sleep(0.001)  # until the writer has taken the 2 held steps
        logger.record(sched(iteration_details=None, num_running_reqs=5), None)
        lines = self.lines(logger)
        self.assertEqual([line.get("r") for line in lines[1:3]], [0, 1])
        gap = lines[3]
        self.assertEqual((gap["gap"], gap["reason"]), (3, "queue full"))
        self.assertEqual(lines[4]["r"], 5)
        self.assertLessEqual(gap["t"], lines[4]["t"])
        self.assertEqual((lines[5]["steps"], lines[5]["dropped"]), (3, 3))

    def test_record_with_none_stats_writes_nothing_and_does_not_raise(self):
        logger = steps.InferlintStepLogger(self.config)
        logger.record(None, None)
        header, end = self.lines(logger)
        self.assertEqual(header["schema"], "inferlint.steps/1")
        self.assertEqual((end["steps"], end["dropped"], end["calls"]), (0, 0, 1))

    def test_an_attribute_that_raises_is_caught_and_counted_as_a_gap(self):
        logger = steps.InferlintStepLogger(self.config)
        logger.record(Raises(), None)  # must not raise
        logger.record(sched(), None)
        header, gap, step, end = self.lines(logger)
        self.assertEqual((gap["gap"], gap["reason"]), (1, "record failed"))
        self.assertEqual(step["r"], 4)
        self.assertEqual((end["steps"], end["dropped"]), (1, 1))

    def test_a_folder_that_does_not_exist_is_one_line_on_stderr_not_an_exception(self):
        missing = os.path.join(self.dir.name, "no-such-folder", "steps.jsonl")
        err = io.StringIO()
        with mock.patch.dict(os.environ, {"INFERLINT_STEPS": missing}), \
                mock.patch("sys.stderr", err):
            logger = steps.InferlintStepLogger(self.config)
            logger._thread.join(timeout=10)
            logger.record(sched(), None)  # must not raise
            logger.close()
        self.assertEqual(err.getvalue().count("\n"), 1)
        self.assertIn(f"cannot write {missing}", err.getvalue())
        self.assertFalse(os.path.exists(missing))

    def test_nothing_written_without_the_variable(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            logger = steps.InferlintStepLogger(self.config)
            logger.record(sched(), iteration([finished()]))
            logger.close()
        self.assertEqual(os.listdir(self.dir.name), [])


if __name__ == "__main__":
    unittest.main()

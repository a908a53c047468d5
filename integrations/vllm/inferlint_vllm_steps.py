"""A vLLM stat-logger plugin that writes each engine step to the file named by
INFERLINT_STEPS, in the inferlint.steps/1 format (docs/steps.md). Without the variable
it does nothing. `record` never blocks and never raises: it reads the stats into a tuple
and puts it on a bounded queue; a daemon thread writes the lines."""

import atexit
import json
import os
import queue
import sys
import threading
import time

__version__ = "0.1.0"
SCHEMA = "inferlint.steps/1"
TESTED = ("0.32",)  # the vLLM versions whose stats this reads as documented
QUEUE_SIZE = 8192  # steps held while the writer catches up (about 1 MiB)
_MISSING = object()

try:  # the base class and version when inside vLLM; plain object in the tests
    from vllm import __version__ as ENGINE_VERSION
    from vllm.v1.metrics import stats as _stats
    from vllm.v1.metrics.loggers import StatLoggerBase
except Exception:  # noqa: BLE001 (any failure to import means: not inside vLLM)
    ENGINE_VERSION, _stats, StatLoggerBase = None, None, object

# What each line reads, as (class, attribute, key): the class names the header's `unread`.
SCHED = (("num_running_reqs", "r"), ("num_waiting_reqs", "w"),
         ("num_skipped_waiting_reqs", "d"), ("kv_cache_usage", "kv"))
DETAIL = (("iteration_index", "i"), ("num_ctx_requests", "pr"), ("num_ctx_tokens", "pt"),
          ("num_generation_requests", "dr"), ("num_generation_tokens", "dt"),
          ("elapsed_ms", "ms"))
ITER = (("num_generation_tokens", "gen"), ("num_prompt_tokens", "prompt"),
        ("num_preempted_reqs", "pre"))
FIN = (("request_id", "fin"), ("finish_reason", "reason"), ("num_prompt_tokens", "in"),
       ("num_generation_tokens", "out"), ("num_cached_tokens", "cached"),
       ("num_preemptions", "pre"), ("queued_time", "queued"), ("prefill_time", "prefill"),
       ("decode_time", "decode"), ("inference_time", "infer"))
CLASSES = (("SchedulerStats", SCHED + (("iteration_details", None),
                                       ("kv_cache_eviction_events", "ev"))),
           ("SchedulerIterationDetails", DETAIL),
           ("IterationStats", ITER + (("finished_requests", None),)),
           ("FinishedRequestStats", FIN))


def _probe():
    """The attributes this vLLM's stats classes lack: the version check, done once."""
    missing = set()
    for cls_name, attrs in CLASSES if _stats is not None else ():
        cls = getattr(_stats, cls_name, None)
        have = set(dir(cls)) | set(getattr(cls, "__dataclass_fields__", ()))
        try:
            have |= set(vars(cls()))
        except Exception:  # noqa: BLE001 (a class that needs arguments: fields only)
            pass
        missing |= {f"{cls_name}.{a}" for a, _ in attrs if a not in have}
    return missing


class InferlintStepLogger(StatLoggerBase):
    def __init__(self, vllm_config=None, engine_index=0):
        self._q = None
        path = os.environ.get("INFERLINT_STEPS")
        if not path:
            return
        if engine_index:  # one file per engine under data parallelism
            path = f"{path}.{engine_index}"
        obs = getattr(vllm_config, "observability_config", None)
        self.details = bool(getattr(obs, "enable_logging_iteration_details", False))
        self.engine_index, self.path = engine_index, path
        self.unread = _probe()
        if ENGINE_VERSION and not ENGINE_VERSION.startswith(TESTED):
            print(f"inferlint steps: vLLM {ENGINE_VERSION} is not a tested version "
                  f"({', '.join(TESTED)}); what it lacks is listed as unread",
                  file=sys.stderr)
        self.t_wall, self.t0 = time.time(), time.monotonic_ns()
        self.full = self.failed = self.calls = self.cost_ns = 0
        self.last_drop_ns = 0
        # INFERLINT_STEPS_COST names a file for each record call's nanoseconds (a debug aid)
        self.cost_path = os.environ.get("INFERLINT_STEPS_COST")
        self.costs = [] if self.cost_path else None
        self._q = queue.Queue(QUEUE_SIZE)
        self._start()
        atexit.register(self.close)

    def _start(self):
        self._thread = threading.Thread(target=self._write, name="inferlint-steps",
                                        daemon=True)
        self._thread.start()

    def _read(self, obj, cls, attrs, out):
        for attr, key in attrs:
            v = getattr(obj, attr, _MISSING)
            if v is _MISSING:
                self.unread.add(f"{cls}.{attr}")
            elif key is not None and v is not None:
                out[key] = v

    def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None, engine_idx=0):
        if self._q is None:
            return
        c0 = time.perf_counter_ns()
        try:
            now, step, fins = time.monotonic_ns(), {}, []
            if scheduler_stats is not None:
                self._read(scheduler_stats, "SchedulerStats", SCHED, step)
                ev = getattr(scheduler_stats, "kv_cache_eviction_events", _MISSING)
                if ev is _MISSING:
                    self.unread.add("SchedulerStats.kv_cache_eviction_events")
                elif ev:
                    step["ev"] = len(ev)
                det = getattr(scheduler_stats, "iteration_details", None)
                if det is not None:
                    self._read(det, "SchedulerIterationDetails", DETAIL, step)
            if iteration_stats is not None:
                self._read(iteration_stats, "IterationStats", ITER, step)
                for f in getattr(iteration_stats, "finished_requests", None) or ():
                    fin = {}
                    self._read(f, "FinishedRequestStats", FIN, fin)
                    if "reason" in fin:
                        fin["reason"] = str(fin["reason"])
                    fins.append(fin)
            if step or fins:
                self._q.put_nowait((now, self.full, self.failed, self.last_drop_ns,
                                    step, fins))
        except queue.Full:
            self.full += 1
            self.last_drop_ns = time.monotonic_ns()
        except Exception:  # noqa: BLE001 (never raise into the engine)
            self.failed += 1
            self.last_drop_ns = time.monotonic_ns()
        self.calls += 1
        self.cost_ns += (c := time.perf_counter_ns() - c0)
        if self.costs is not None:
            self.costs.append(c)

    def log_engine_initialized(self):
        pass

    def _t(self, ns):
        return round((ns - self.t0) / 1e9, 6)

    def _write(self):
        try:
            out = open(self.path, "w", encoding="utf-8")
        except OSError as e:  # one line, then record does nothing
            print(f"inferlint steps: cannot write {self.path}: {e}", file=sys.stderr)
            self._q = None
            return
        with out:
            line = lambda obj: out.write(json.dumps(obj, separators=(",", ":")) + "\n")
            header, steps, full, failed = False, 0, 0, 0
            while True:
                item = self._q.get()
                if not header:
                    line({"schema": SCHEMA, "plugin": __version__, "engine": "vllm",
                          "engine_version": ENGINE_VERSION, "engine_index": self.engine_index,
                          "pid": os.getpid(), "t_wall": self.t_wall, "t_mono_ns": self.t0,
                          "iteration_details": self.details, "unread": sorted(self.unread)})
                    header = True
                if item is None:  # shut down: drops after the last step, then the end
                    item = (time.monotonic_ns(), self.full, self.failed, self.last_drop_ns,
                            None, ())
                now, f_full, f_failed, drop_ns, step, fins = item
                if f_full + f_failed > full + failed:
                    why = [w for w, n in (("queue full", f_full - full),
                                          ("record failed", f_failed - failed)) if n]
                    line({"t": self._t(drop_ns), "gap": f_full + f_failed - full - failed,
                          "reason": ", ".join(why)})
                    full, failed = f_full, f_failed
                t = self._t(now)
                if step is None:
                    line({"t": t, "end": True, "steps": steps, "dropped": full + failed,
                          "calls": self.calls, "record_ns": self.cost_ns})
                    out.flush()
                    if self.cost_path:
                        with open(self.cost_path, "w", encoding="utf-8") as costs:
                            costs.write("".join(f"{c}\n" for c in self.costs))
                    return
                if step:
                    for key, digits in (("kv", 4), ("ms", 3)):
                        if isinstance(step.get(key), float):
                            step[key] = round(step[key], digits)
                    line({"t": t, **step})
                    steps += 1
                for fin in fins:
                    line({"t": t, **{k: round(v, 6) if isinstance(v, float) else v
                                     for k, v in fin.items()}})
                if self._q.empty():
                    out.flush()

    def close(self):
        """Writes the end line (at exit; safe to call twice)."""
        if self._q is None or not getattr(self, "_thread", None) or not self._thread.is_alive():
            return
        try:
            self._q.put(None, timeout=2)
            self._thread.join(timeout=2)
        except Exception:  # noqa: BLE001 (a full queue at exit: no end line)
            pass

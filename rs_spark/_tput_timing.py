# temporary instrumentation, never committed
import time, os, functools
def timed(name):
    def deco(fn):
        @functools.wraps(fn)
        def w(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                with open("/tmp/h-tput/timing.log", "a") as f:
                    f.write(f"{time.time()%1000:.3f} {os.getpid()} {name} {1000*(time.perf_counter()-t0):.1f}ms\n")
        return w
    return deco

"""Stopping a process the test started: the one way the suite's Python drivers do it."""
import subprocess


def stop(proc, seconds=15):
    """SIGTERM, SIGKILL if it is still running after `seconds`; waits for it either way."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=seconds)

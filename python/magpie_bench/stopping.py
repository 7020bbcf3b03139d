"""When to stop taking samples, after nvbench's relative-noise criterion.

Stop once at least `min_samples` samples and `min_time_s` of measured time are
in and the relative standard deviation is below `max_noise`; or when the noise
estimate has converged above that (it stops falling, so more samples would not
help); or after `max_time_s` of wall time, or `max_samples` samples.
"""
import math


def rel_stddev(xs):
    n = len(xs)
    if n < 2:
        return math.inf
    mean = sum(xs) / n
    if mean <= 0:
        return math.inf
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    return math.sqrt(var) / mean


class StdRelCriterion:
    def __init__(self, max_noise=0.005, min_samples=10, min_time_s=0.5, max_time_s=15.0,
                 max_samples=5000, check_every=10, converge_window=6, converge_tol=0.05):
        self.max_noise = max_noise
        self.min_samples = min_samples
        self.min_time_s = min_time_s
        self.max_time_s = max_time_s
        self.max_samples = max_samples
        self.check_every = check_every
        self.converge_window = converge_window
        self.converge_tol = converge_tol
        self.history = []
        self.reason = None

    def should_stop(self, samples_s, measured_time_s, wall_time_s):
        """samples_s: kept samples (seconds); returns True and sets .reason to stop."""
        n = len(samples_s)
        if wall_time_s >= self.max_time_s:
            self.reason = "max_time"
            return True
        if n >= self.max_samples:
            self.reason = "max_samples"
            return True
        if n < self.min_samples or measured_time_s < self.min_time_s or n % self.check_every:
            return False
        noise = rel_stddev(samples_s)
        self.history.append(noise)
        if noise < self.max_noise:
            self.reason = "noise"
            return True
        recent = self.history[-self.converge_window:]
        if len(recent) == self.converge_window:
            mean = sum(recent) / len(recent)
            if mean > 0 and (max(recent) - min(recent)) / mean < self.converge_tol:
                self.reason = "noise_converged"
                return True
        return False

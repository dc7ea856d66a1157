"""The statistics repro's derived files and power plans compute by, and the numbers that must come
out the same wherever a bundle is verified.

- :mod:`.estimators`: a sample's mean, sd and interval, and the estimand's over the conditions.
- :mod:`.inference`: the tests of two groups of runs (McNemar's and Fisher's exact tests with
  Newcombe's intervals, cluster-robust t) and Holm's adjustment of a family's p-values.
- :mod:`.rl`: rliable's aggregates of runs x tasks scores, with their stratified bootstrap
  intervals.
- :mod:`.bootstrap`: the one bootstrap engine every seeded resampling of a figure runs through
  (an interval's, a contrast's, rliable's): its draws, its replicates a batch at a time, a
  contrast's bootstrap p-value.
- :mod:`.draws` and :mod:`.resampling`: the random draws of every seeded resampling, owned by
  repro and made from a bit generator's raw stream, and the percentiles of an interval's ends.
- :mod:`.figures`: the policy by which a re-derived figure is compared with the one a bundle
  stores.

It imports none of repro's other subpackages but :mod:`repro._layout`: derive, power and verify
build on it."""

"""Numbers that must come out the same wherever a bundle is verified: the random draws of every
seeded resampling, owned by repro and made from a bit generator's raw stream (:mod:`.draws`),
and the policy by which a re-derived figure is compared with the one a bundle stores
(:mod:`.figures`)."""

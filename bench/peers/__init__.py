"""Hand-written peers: the short scripts a team would write instead of adopting the pipeline
(issue 16). Each is kept as simple as a correct script can be; ``make bench`` times the
pipeline against them and ``tests/e2e/test_bench_peers.py`` holds their scores to the pipeline's."""

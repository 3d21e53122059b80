"""The numbers the source reports in Section 8.6 (Figure 8.1), transcribed; no computation."""

#: The average condition numbers of the 10 trials of Figure 8.1, for n = 16, 32, 64, 128 (d = 4).
PAPER_KAPPA_MEANS = {16: 4.57, 32: 3.13, 64: 2.07, 128: 1.62}
#: Figure 8.1's setting: feature dimension and trials per n.
PAPER_D, PAPER_TRIALS = 4, 10

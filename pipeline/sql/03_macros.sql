-- wilson_low / wilson_high: the 95% Wilson score interval of a rate p over n
-- trials (better than p ± 1.96·se near 0 and 1, and never outside [0, 1]).
create or replace macro wilson_low(p, n) as
    (p + 1.96 ^ 2 / (2 * n) - 1.96 * sqrt(p * (1 - p) / n + 1.96 ^ 2 / (4 * n ^ 2)))
    / (1 + 1.96 ^ 2 / n);
create or replace macro wilson_high(p, n) as
    (p + 1.96 ^ 2 / (2 * n) + 1.96 * sqrt(p * (1 - p) / n + 1.96 ^ 2 / (4 * n ^ 2)))
    / (1 + 1.96 ^ 2 / n);

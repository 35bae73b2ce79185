"""Analysis of stored runs (docs/analysis.md): statistics (stats), scores and
the composite (scores), the star rating (rating), growth per task
(determinism), worst-case estimates (evt), comparisons (compare) and
pass/fail criteria (criteria)."""

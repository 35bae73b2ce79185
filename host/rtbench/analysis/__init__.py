"""Statistics, scores and (later) ratings, comparisons and worst-case estimates."""

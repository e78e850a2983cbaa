"""Chapter 03's exercise checks (see harness.exercises)."""

"""Chapter 05's exercise checks (see harness.exercises)."""

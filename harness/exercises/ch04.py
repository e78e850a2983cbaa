"""Chapter 04's exercise checks (see harness.exercises)."""

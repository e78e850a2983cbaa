"""Chapter 02's exercise checks (see harness.exercises)."""

"""Chapter 01's exercise checks (see harness.exercises)."""

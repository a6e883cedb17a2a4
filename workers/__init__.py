"""Background workers (APScheduler): reapers and other maintenance, leader-locked across replicas."""

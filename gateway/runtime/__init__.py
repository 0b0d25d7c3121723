"""What keeps the process going: the inbox and its worker, replicas, schedules, metrics."""

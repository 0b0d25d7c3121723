"""An offline evaluation of the learning loop: simulated users, a scripted model and a reviewer."""

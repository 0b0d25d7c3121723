"""What a message or a button press means, decided once for every platform."""

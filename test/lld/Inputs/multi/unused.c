int never_used(void) { return 42; }

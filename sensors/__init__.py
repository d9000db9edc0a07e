"""Sensors and schedules for proactive adaptation (DESIGN §1.5); see issue 'Proactive adaptation'."""

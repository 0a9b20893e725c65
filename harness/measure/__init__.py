"""Timing and machine measurement: rounds, launch statistics, energy, machine state and roofline."""

"""sysinfo"""

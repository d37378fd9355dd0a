DROP TABLE rate_limit_windows;

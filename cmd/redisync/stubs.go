package main

import "io"

func cmdSemaphore(args []string, stdout, stderr io.Writer) int { return 1 }
func cmdLatch(args []string, stdout, stderr io.Writer) int     { return 1 }

package db

// CollectUpTo is Collect with a count limit of the test's choosing.
var CollectUpTo = collect

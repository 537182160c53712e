package postgres

// SideEffect exports sideEffect to the tests.
var SideEffect = sideEffect

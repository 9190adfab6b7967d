"""What every policy is written against and run through: the contract (``api``, its values in
``messages``), the registry of names, declared parameter ranges (``bounds``), the stand-ins for
Spark's own schedulers (``standins``) and the switch to the compiled core (``compiled``)."""

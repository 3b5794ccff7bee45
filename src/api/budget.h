/*-------------------------------------------------------------------------
 * api/budget.h
 *	  Budgets: admitting a claimed task's cost, and knowing whether a
 *	  database has any budget at all.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_BUDGET_H
#define SCHEDQ_BUDGET_H

extern bool schedq_budget_any(void);
extern bool schedq_budget_admit(Datum budgets, Datum cost);

#endif /* SCHEDQ_BUDGET_H */

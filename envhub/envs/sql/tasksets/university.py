"""Questions about the ``university`` database."""

from __future__ import annotations

from .base import Template as T
from .base import values

UNIVERSITY = [
    T(
        "university",
        "students_in_dept",
        "How many students major in {dept}?",
        "SELECT COUNT(*) FROM students s JOIN departments d ON d.dept_id = s.dept_id "
        "WHERE d.name = {dept}",
        "SELECT name AS dept FROM departments ORDER BY name",
    ),
    T(
        "university",
        "well_paid_instructors",
        "List the names and salaries of the instructors of the {dept} department who earn more "
        "than {amount} EUR a year.",
        "SELECT i.name, i.salary FROM instructors i JOIN departments d ON d.dept_id = i.dept_id "
        "WHERE d.name = {dept} AND i.salary > {amount}",
        "SELECT dept, amount FROM (SELECT name AS dept FROM departments) JOIN ("
        + values("amount", 60000, 90000)
        + ") ORDER BY dept, amount",
    ),
    T(
        "university",
        "course_avg_grade",
        "What is the average grade in course {course_id} over all terms, counting only graded "
        "enrollments?",
        "SELECT AVG(grade) FROM enrollments WHERE course_id = {course_id} AND grade IS NOT NULL",
        "SELECT DISTINCT course_id FROM enrollments WHERE grade IS NOT NULL ORDER BY course_id",
    ),
    T(
        "university",
        "no_advisor",
        "List the names of the {dept} students who have no advisor.",
        "SELECT s.name FROM students s JOIN departments d ON d.dept_id = s.dept_id "
        "WHERE d.name = {dept} AND s.advisor_id IS NULL",
        "SELECT name AS dept FROM departments ORDER BY name",
    ),
    T(
        "university",
        "top_students",
        "Which {n} students have the highest average grade among those with at least {k} graded "
        "enrollments? Give the name and the average grade, highest first.",
        "SELECT s.name, AVG(e.grade) AS avg_grade FROM students s JOIN enrollments e ON "
        "e.student_id = s.student_id WHERE e.grade IS NOT NULL GROUP BY s.student_id "
        "HAVING COUNT(e.grade) >= {k} ORDER BY avg_grade DESC LIMIT {n}",
        "SELECT n, k FROM ("
        + values("n", 2, 3, 5)
        + ") JOIN ("
        + values("k", 3, 4, 5)
        + ") ORDER BY n, k",
        sort_key=(1,),
    ),
    T(
        "university",
        "in_progress_by_course",
        "For each course with enrollments still in progress (no grade yet), give the course id "
        "and the number of such enrollments.",
        "SELECT course_id, COUNT(*) FROM enrollments WHERE grade IS NULL GROUP BY course_id",
    ),
    T(
        "university",
        "teachers_in_term",
        "Which instructors taught in term {term}? List each one's name once.",
        "SELECT DISTINCT i.name FROM instructors i JOIN teaches t ON t.instructor_id = "
        "i.instructor_id WHERE t.term = {term}",
        "SELECT DISTINCT term FROM teaches ORDER BY term",
    ),
    T(
        "university",
        "budget_per_student",
        "For each department, give its name and its budget divided by the number of students "
        "majoring in it.",
        "SELECT d.name, d.budget / COUNT(s.student_id) FROM departments d JOIN students s ON "
        "s.dept_id = d.dept_id GROUP BY d.dept_id",
    ),
    T(
        "university",
        "untaught_courses",
        "List the titles of the {dept} courses that were not taught in term {term}.",
        "SELECT c.title FROM courses c JOIN departments d ON d.dept_id = c.dept_id WHERE "
        "d.name = {dept} AND c.course_id NOT IN "
        "(SELECT course_id FROM teaches WHERE term = {term})",
        "SELECT d.name AS dept, t.term FROM departments d JOIN (SELECT DISTINCT term FROM "
        "teaches) t ORDER BY d.name, t.term",
    ),
    T(
        "university",
        "enrolled_in",
        "List the names of the students enrolled in course {course_id} in term {term}.",
        "SELECT s.name FROM students s JOIN enrollments e ON e.student_id = s.student_id "
        "WHERE e.course_id = {course_id} AND e.term = {term}",
        "SELECT DISTINCT course_id, term FROM enrollments ORDER BY course_id, term",
    ),
    T(
        "university",
        "credits_passed",
        "What is the total number of credits of the courses that the student with id {sid} "
        "passed (a grade of at least 10)?",
        "SELECT SUM(c.credits) FROM enrollments e JOIN courses c ON c.course_id = e.course_id "
        "WHERE e.student_id = {sid} AND e.grade >= 10",
        "SELECT DISTINCT student_id AS sid FROM enrollments WHERE grade >= 10 ORDER BY sid",
    ),
    T(
        "university",
        "hires_per_decade",
        "How many instructors were hired in each decade? Give the decade's first year (for "
        "example 1990) and the number of instructors, in chronological order.",
        "SELECT (hire_year / 10) * 10 AS decade, COUNT(*) FROM instructors GROUP BY decade "
        "ORDER BY decade",
        sort_key=(0,),
    ),
    T(
        "university",
        "busy_advisors",
        "List the names of the instructors who advise more than {k} students, with the number "
        "of students each advises.",
        "SELECT i.name, COUNT(*) FROM instructors i JOIN students s ON s.advisor_id = "
        "i.instructor_id GROUP BY i.instructor_id HAVING COUNT(*) > {k}",
        values("k", 6, 8, 10, 12),
    ),
    T(
        "university",
        "best_in_course",
        "Who got the highest grade in course {course_id} in term {term}? Give the student's "
        "name and grade (every such student if several tie).",
        "SELECT s.name, e.grade FROM enrollments e JOIN students s ON s.student_id = "
        "e.student_id WHERE e.course_id = {course_id} AND e.term = {term} AND e.grade = "
        "(SELECT MAX(grade) FROM enrollments WHERE course_id = {course_id} AND term = {term})",
        "SELECT DISTINCT course_id, term FROM enrollments WHERE grade IS NOT NULL "
        "ORDER BY course_id, term",
    ),
]
